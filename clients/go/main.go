// A small Go client of the canvas service, on grpc-go stubs generated from proto/ (clients/README.md).
// It calls the gateway at the standard gRPC paths (`/app.rooms.v1.RoomsService/ListRooms`), with no
// interceptor, over h2c: the gRPC health check and a reflection listing with grpc-go's own clients,
// then sign-in by magic link and poll, list and create rooms, and a refusal decoded with its
// google.rpc.BadRequest details. It prints what it did, then one JSON line (the test reads it).
//
//	canvas-go-client -addr 127.0.0.1:8080 -email you@example.com [-link URL | -outbox DATA_DIR/outbox]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	authv1 "example.com/canvas/gen/app/auth/v1"
	roomsv1 "example.com/canvas/gen/app/rooms/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Summary is what the client found, printed as one JSON line at the end.
type Summary struct {
	Health      string     `json:"health"`
	Services    []string   `json:"services"`
	RoomMethods []string   `json:"roomMethods"`
	Email       string     `json:"email"`
	RoomID      string     `json:"roomId"`
	RoomsListed int32      `json:"roomsListed"`
	Listed      bool       `json:"listedCreatedRoom"`
	Refusal     RefusalOut `json:"refusal"`
}

// RefusalOut is a refused call: its gRPC code, message and the field violations of its BadRequest detail.
type RefusalOut struct {
	Code       string              `json:"code"`
	Message    string              `json:"message"`
	Violations []map[string]string `json:"violations"`
}

var tokenInLink = regexp.MustCompile(`token=([A-Za-z0-9_-]+)`)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port of the service (h2c)")
	email := flag.String("email", "", "the address to sign in with")
	link := flag.String("link", "", "the magic link from the e-mail (or its token); else read from -outbox")
	outbox := flag.String("outbox", "", "the service's outbox folder (DATA_DIR/outbox), where mail goes without SMTP")
	flag.Parse()
	if *email == "" {
		fail("-email is required")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Plain text HTTP/2 (h2c), as grpcurl -plaintext; use grpc.WithTransportCredentials for TLS.
	conn, err := grpc.DialContext(ctx, *addr, grpc.WithInsecure(), grpc.WithBlock())
	check(err, "dial")
	defer conn.Close()

	var out Summary
	out.Email = *email

	health, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	check(err, "health check")
	out.Health = health.GetStatus().String()
	fmt.Println("health:", out.Health)

	out.Services, out.RoomMethods = reflect(ctx, conn)
	fmt.Println("services:", strings.Join(out.Services, ", "))
	fmt.Println("app.rooms.v1.RoomsService:", strings.Join(out.RoomMethods, ", "))

	auth := authv1.NewAuthServiceClient(conn)
	started, err := auth.RequestLogin(ctx, &authv1.RequestLoginRequest{Email: *email})
	check(err, "RequestLogin")
	token := *link
	if token == "" {
		token = linkFromOutbox(ctx, *outbox, *email)
	}
	if m := tokenInLink.FindStringSubmatch(token); m != nil {
		token = m[1]
	}
	// What the browser does when the user opens the link.
	_, err = auth.AuthorizeLogin(ctx, &authv1.AuthorizeLoginRequest{Token: token})
	check(err, "AuthorizeLogin")
	accessToken := poll(ctx, auth, started.GetPollToken())
	fmt.Println("signed in as", *email)

	signedIn := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+accessToken)
	rooms := roomsv1.NewRoomsServiceClient(conn)
	created, err := rooms.CreateRoom(signedIn, &roomsv1.CreateRoomRequest{Name: "From Go", IsPublic: false})
	check(err, "CreateRoom")
	out.RoomID = created.GetRoom().GetId()
	fmt.Println("created room", out.RoomID)
	listed, err := rooms.ListRooms(signedIn, &roomsv1.ListRoomsRequest{})
	check(err, "ListRooms")
	out.RoomsListed = listed.GetPagination().GetTotal()
	for _, room := range listed.GetRooms() {
		fmt.Printf("  %s  %s\n", room.GetId(), room.GetName())
		out.Listed = out.Listed || room.GetId() == out.RoomID
	}

	// An empty name is refused: INVALID_ARGUMENT with a google.rpc.BadRequest detail per field.
	_, err = rooms.CreateRoom(signedIn, &roomsv1.CreateRoomRequest{Name: ""})
	if err == nil {
		fail("CreateRoom with an empty name was accepted")
	}
	refused := status.Convert(err)
	out.Refusal = RefusalOut{Code: refused.Code().String(), Message: refused.Message(), Violations: []map[string]string{}}
	for _, detail := range refused.Details() {
		if badRequest, ok := detail.(*errdetails.BadRequest); ok {
			for _, v := range badRequest.GetFieldViolations() {
				out.Refusal.Violations = append(out.Refusal.Violations, map[string]string{"field": v.GetField(), "description": v.GetDescription()})
				fmt.Printf("refused: %s: %s\n", v.GetField(), v.GetDescription())
			}
		}
	}

	line, err := json.Marshal(out)
	check(err, "summary")
	fmt.Println(string(line))
}

// reflect lists the services by server reflection (grpc-go's v1alpha client) and the methods of
// RoomsService from the file descriptor the server sends for it.
func reflect(ctx context.Context, conn *grpc.ClientConn) ([]string, []string) {
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	check(err, "reflection")
	defer stream.CloseSend()
	ask := func(request *reflectionpb.ServerReflectionRequest) *reflectionpb.ServerReflectionResponse {
		check(stream.Send(request), "reflection send")
		response, err := stream.Recv()
		check(err, "reflection receive")
		if e := response.GetErrorResponse(); e != nil {
			fail(fmt.Sprintf("reflection: %s", e.GetErrorMessage()))
		}
		return response
	}
	var services []string
	for _, s := range ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{ListServices: "*"}}).GetListServicesResponse().GetService() {
		services = append(services, s.GetName())
	}
	var methods []string
	files := ask(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "app.rooms.v1.RoomsService"}})
	for _, bytes := range files.GetFileDescriptorResponse().GetFileDescriptorProto() {
		var file descriptorpb.FileDescriptorProto
		check(proto.Unmarshal(bytes, &file), "file descriptor")
		for _, service := range file.GetService() {
			if file.GetPackage()+"."+service.GetName() != "app.rooms.v1.RoomsService" {
				continue
			}
			for _, method := range service.GetMethod() {
				methods = append(methods, method.GetName())
			}
		}
	}
	sort.Strings(methods)
	return services, methods
}

// linkFromOutbox waits for the newest mail to the address in the outbox folder and returns its text.
func linkFromOutbox(ctx context.Context, dir, email string) string {
	if dir == "" {
		fail("no -link and no -outbox: pass the link from the e-mail")
	}
	for {
		if text := newestMailTo(dir, strings.ToLower(email)); text != "" {
			return text
		}
		select {
		case <-ctx.Done():
			fail("no mail to " + email + " in " + dir)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func newestMailTo(dir, email string) string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(names)
	for i := len(names) - 1; i >= 0; i-- {
		raw, err := ioutil.ReadFile(names[i])
		if err != nil {
			continue
		}
		var mail struct {
			To   string `json:"to"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &mail) == nil && mail.To == email {
			return mail.Text
		}
	}
	return ""
}

// poll asks PollLoginStatus until the sign-in is COMPLETED, and returns the access token.
func poll(ctx context.Context, auth authv1.AuthServiceClient, pollToken string) string {
	for {
		reply, err := auth.PollLoginStatus(ctx, &authv1.PollLoginStatusRequest{PollToken: pollToken})
		check(err, "PollLoginStatus")
		if reply.GetStatus() == authv1.LoginStatus_COMPLETED {
			return reply.GetAccessToken()
		}
		select {
		case <-ctx.Done():
			fail("sign-in did not complete")
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func check(err error, what string) {
	if err != nil {
		fail(fmt.Sprintf("%s: %v", what, err))
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "canvas-go-client:", message)
	os.Exit(1)
}
